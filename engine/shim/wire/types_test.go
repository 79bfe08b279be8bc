package wire

import (
	"errors"
	"testing"

	"github.com/containerd/errdefs"
)

func TestNewStartError(t *testing.T) {
	tests := []struct {
		msg   string
		code  int
		class error
	}{
		{`unable to start container process: error during container init: exec: "nosuch": executable file not found in $PATH`, 127, errdefs.ErrInvalidArgument},
		{`exec: "/bin/nosuch": stat /bin/nosuch: no such file or directory`, 127, errdefs.ErrInvalidArgument},
		{`exec: "/etc/passwd": permission denied`, 126, errdefs.ErrInvalidArgument},
		{`unable to start container process: exec: "/etc": is a directory`, 126, errdefs.ErrInvalidArgument},
		{`exec: "/x": stat /x: no such file or directory: permission denied`, 126, errdefs.ErrInvalidArgument},
		{`mount /a to /b: not a directory`, 127, errdefs.ErrInvalidArgument},
		{`could not join or create cgroup`, 128, errdefs.ErrUnknown},
	}
	for _, tc := range tests {
		t.Run(tc.msg, func(t *testing.T) {
			err := error(NewStartError(tc.msg))
			var se *StartError
			if !errors.As(err, &se) || se.ExitCode != tc.code || !errors.Is(err, tc.class) {
				t.Errorf("%v: code %d, want %d and class %v", err, se.ExitCode, tc.code, tc.class)
			}
		})
	}
}

// Errors keep their class across the socket.
func TestResponseErrClass(t *testing.T) {
	tests := []struct {
		name string
		err  error
		is   func(error) bool
	}{
		{"not found", errdefsWrap(errdefs.ErrNotFound), errdefs.IsNotFound},
		{"conflict", errdefsWrap(errdefs.ErrConflict), errdefs.IsConflict},
		{"invalid", errdefsWrap(errdefs.ErrInvalidArgument), errdefs.IsInvalidArgument},
		{"precondition", errdefsWrap(errdefs.ErrFailedPrecondition), errdefs.IsFailedPrecondition},
		{"exists", errdefsWrap(errdefs.ErrAlreadyExists), errdefs.IsAlreadyExists},
		{"start error", NewStartError(`exec: "x": executable file not found in $PATH`), func(err error) bool {
			var se *StartError
			return errors.As(err, &se) && se.ExitCode == 127 && errdefs.IsInvalidArgument(err)
		}},
		{"plain", errors.New("boom"), func(err error) bool { return err.Error() == "boom" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ErrorResponse(tc.err).Err()
			if !tc.is(got) || got.Error() != tc.err.Error() {
				t.Errorf("%v came back as %v (%T)", tc.err, got, got)
			}
		})
	}
	if (&Response{}).Err() != nil {
		t.Error("an empty response is an error")
	}
}

func errdefsWrap(class error) error { return &remoteError{msg: "it failed", class: class} }
