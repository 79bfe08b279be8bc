package archive

import (
	"testing"

	"github.com/containerd/errdefs"
)

func TestContainerPath(t *testing.T) {
	for in, want := range map[string]string{
		"/": "/", "": "/", "etc": "/etc", "/etc/": "/etc/", "/etc/.": "/etc/.",
		"/a/../b": "/b", "../../x": "/x", "/a//b/": "/a/b/",
		// A last element "." asks for the directory's content, as in
		// Docker, whatever surrounds it.
		".": "/.", "/.": "/.", "./": "/.", "/./": "/.", "a/./": "/a/.", "a/.//": "/a/.",
	} {
		if got := ContainerPath(in); got != want {
			t.Errorf("ContainerPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEntryNameAndLinks(t *testing.T) {
	tests := []struct {
		name, want string
		bad        bool
	}{
		{name: "a/b", want: "a/b"},
		{name: "./a/", want: "a"},
		{name: "/abs/x", want: "abs/x"},
		{name: "/../x", want: "x"},
		{name: ".", want: "."},
		{name: "./", want: "."},
		{name: "..", bad: true},
		{name: "../x", bad: true},
		{name: "a/../../x", bad: true},
	}
	for _, tc := range tests {
		got, err := entryName(tc.name)
		if tc.bad != errdefs.IsInvalidArgument(err) || (!tc.bad && got != tc.want) {
			t.Errorf("entryName(%q) = %q, %v", tc.name, got, err)
		}
	}
	for _, tc := range []struct {
		dest, full string
		typ        byte
		link       string
		bad        bool
	}{
		{dest: "/tmp", full: "/tmp/l", typ: tarTypeSymlink, link: "/etc/shadow"},
		{dest: "/tmp", full: "/tmp/a/l", typ: tarTypeSymlink, link: "../b"},
		{dest: "/tmp", full: "/tmp/l", typ: tarTypeSymlink, link: "../etc", bad: true},
		{dest: "/", full: "/l", typ: tarTypeSymlink, link: "../../../etc"},
		{dest: "/tmp", full: "/tmp/h", typ: tarTypeLink, link: "x/../y"},
		{dest: "/tmp", full: "/tmp/h", typ: tarTypeLink, link: "../x", bad: true},
	} {
		if err := checkLink(tc.dest, tc.full, tc.typ, tc.link); tc.bad != errdefs.IsInvalidArgument(err) {
			t.Errorf("checkLink(%q, %q, %q) = %v", tc.dest, tc.full, tc.link, err)
		}
	}
}
