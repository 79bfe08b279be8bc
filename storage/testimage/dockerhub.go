package testimage

import (
	"bytes"
	"encoding/binary"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Docker Hub's busybox image names these users and groups; Docker's own
// test suite runs as some of them (daemon, nobody, www-data...).
const (
	dockerBusyboxPasswd = `root:x:0:0:root:/root:/bin/sh
daemon:x:1:1:daemon:/usr/sbin:/bin/false
bin:x:2:2:bin:/bin:/bin/false
sys:x:3:3:sys:/dev:/bin/false
sync:x:4:100:sync:/bin:/bin/sync
mail:x:8:8:mail:/var/spool/mail:/bin/false
www-data:x:33:33:www-data:/var/www:/bin/false
operator:x:37:37:Operator:/var:/bin/false
nobody:x:65534:65534:nobody:/home:/bin/false
`
	dockerBusyboxGroup = `root:x:0:
daemon:x:1:
bin:x:2:
sys:x:3:
adm:x:4:
tty:x:5:
disk:x:6:
lp:x:7:
mail:x:8:
kmem:x:9:
wheel:x:10:root
cdrom:x:11:
dialout:x:18:
floppy:x:19:
video:x:28:
audio:x:29:
tape:x:32:
www-data:x:33:
operator:x:37:
utmp:x:43:
plugdev:x:46:
staff:x:50:
lock:x:54:
netdev:x:82:
users:x:100:
nogroup:x:65534:
`
)

// Debian's static busybox has no adduser and addgroup applets, which
// Dockerfiles on Docker Hub's busybox use: these scripts do what the
// applets do with the options such Dockerfiles give.
const (
	addgroupScript = `#!/bin/sh
# addgroup [-g GID] [-S] GROUP, or addgroup USER GROUP
gid=
while getopts g:S o; do
	case $o in g) gid=$OPTARG ;; S) ;; *) exit 1 ;; esac
done
shift $((OPTIND - 1))
if [ $# -eq 2 ]; then
	grep -q "^$2:" /etc/group || { echo "addgroup: unknown group $2" >&2; exit 1; }
	sed -i "/^$2:/{s/\$/,$1/;s/:,/:/}" /etc/group
	exit 0
fi
[ $# -eq 1 ] || { echo "usage: addgroup [-g GID] GROUP" >&2; exit 1; }
if grep -q "^$1:" /etc/group; then echo "addgroup: group '$1' in use" >&2; exit 1; fi
if [ -z "$gid" ]; then
	gid=1000
	while cut -d: -f3 /etc/group | grep -qx "$gid"; do gid=$((gid + 1)); done
fi
echo "$1:x:$gid:" >>/etc/group
`
	adduserScript = `#!/bin/sh
# adduser [-D] [-H] [-S] [-u UID] [-G GROUP] [-h HOME] [-s SHELL] USER
uid= group= home= shell=/bin/sh nohome=
while getopts DHSu:G:h:s:g: o; do
	case $o in
	D | S | g) ;;
	H) nohome=1 ;;
	u) uid=$OPTARG ;;
	G) group=$OPTARG ;;
	h) home=$OPTARG ;;
	s) shell=$OPTARG ;;
	*) exit 1 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || { echo "usage: adduser [-D] [-u UID] [-G GROUP] USER" >&2; exit 1; }
name=$1
if grep -q "^$name:" /etc/passwd; then echo "adduser: user '$name' in use" >&2; exit 1; fi
if [ -z "$uid" ]; then
	uid=1000
	while cut -d: -f3 /etc/passwd | grep -qx "$uid"; do uid=$((uid + 1)); done
fi
if [ -n "$group" ]; then
	gid=$(grep "^$group:" /etc/group | cut -d: -f3)
	[ -n "$gid" ] || { echo "adduser: unknown group $group" >&2; exit 1; }
else
	addgroup -g "$uid" "$name" || exit 1
	gid=$uid
fi
home=${home:-/home/$name}
echo "$name:x:$uid:$gid:Linux User,,,:$home:$shell" >>/etc/passwd
if [ -z "$nohome" ]; then mkdir -p "$home" && chown "$uid:$gid" "$home"; fi
`
)

// DockerBusybox returns a stand-in for Docker Hub's busybox: Busybox's tree
// with that image's users, groups and directories, and its command "sh".
func DockerBusybox() (v1.Image, error) {
	files, err := busyboxFiles(dockerBusyboxPasswd, dockerBusyboxGroup)
	if err != nil {
		return nil, err
	}
	files = append(files,
		file{name: "bin/adduser", mode: 0o755, body: []byte(adduserScript)},
		file{name: "bin/addgroup", mode: 0o755, body: []byte(addgroupScript)},
		file{name: "var/spool/", mode: 0o755, dir: true},
		file{name: "var/spool/mail/", mode: 0o755, uid: 8, gid: 8, dir: true},
		file{name: "var/www/", mode: 0o755, uid: 33, gid: 33, dir: true},
	)
	layer, err := memLayer(files)
	if err != nil {
		return nil, err
	}
	return build([]v1.Layer{layer}, []string{"sh"})
}

// HelloMessage is what the HelloWorld image prints.
const HelloMessage = "\nHello from Docker!\nThis message shows that your installation appears to be working correctly.\n\n"

// HelloWorld returns a stand-in for Docker Hub's hello-world: one file,
// /hello, a static program that prints HelloMessage, and the command
// "/hello". The program is x86-64 code whatever platform the config claims
// (ForPlatform), as the other images are this machine's busybox.
func HelloWorld() (v1.Image, error) {
	layer, err := memLayer([]file{{name: "hello", mode: 0o755, body: helloELF(HelloMessage)}})
	if err != nil {
		return nil, err
	}
	return build([]v1.Layer{layer}, []string{"/hello"})
}

// helloELF assembles the smallest x86-64 Linux executable that writes msg
// to standard output and exits 0: an ELF header, one loadable segment, 33
// bytes of code and the message.
func helloELF(msg string) []byte {
	const (
		base    = 0x400000
		ehsize  = 64
		phsize  = 56
		codeOff = ehsize + phsize
	)
	code := []byte{
		0xb8, 1, 0, 0, 0, // mov eax, 1 (write)
		0xbf, 1, 0, 0, 0, // mov edi, 1 (stdout)
		0x48, 0x8d, 0x35, 16, 0, 0, 0, // lea rsi, [rip+16] (the message after the code)
		0xba, 0, 0, 0, 0, // mov edx, len(msg)
		0x0f, 0x05, // syscall
		0xb8, 60, 0, 0, 0, // mov eax, 60 (exit)
		0x31, 0xff, // xor edi, edi
		0x0f, 0x05, // syscall
	}
	binary.LittleEndian.PutUint32(code[18:], uint32(len(msg)))
	size := uint64(codeOff + len(code) + len(msg))
	var b bytes.Buffer
	b.Write([]byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	le := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	le(uint16(2))              // ET_EXEC
	le(uint16(0x3e))           // EM_X86_64
	le(uint32(1))              // EV_CURRENT
	le(uint64(base + codeOff)) // entry
	le(uint64(ehsize))         // program headers
	le(uint64(0))              // no section headers
	le(uint32(0))              // flags
	le(uint16(ehsize))
	le(uint16(phsize))
	le(uint16(1))
	le(uint16(0))
	le(uint16(0))
	le(uint16(0))
	le(uint32(1))    // PT_LOAD
	le(uint32(5))    // R+X
	le(uint64(0))    // from the file's start
	le(uint64(base)) // vaddr
	le(uint64(base)) // paddr
	le(size)
	le(size)
	le(uint64(0x1000))
	b.Write(code)
	b.WriteString(msg)
	return b.Bytes()
}
