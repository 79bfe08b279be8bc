// Package filter gives containers their seccomp filter without compiling
// it in each container's init.
//
// runc's libcontainer compiles the OCI profile with libseccomp in the init
// of every container and every exec; for Docker's default profile (three
// architectures on amd64) that is some 20 ms of CPU, as much as the rest of
// a container's start. hutch-runtime compiles it instead once per profile
// (Compile, with libseccomp and runc's own -ENOSYS patch, so the program is
// the one runc would load) and keeps it (Cache: in memory in the runtime
// server, and on disk for the runtimes of one step). The runtime takes the
// profile out of libcontainer's config and passes the program to the init
// as a sealed memfd at Fd; the init (Arm, before libcontainer.Init) installs
// it where runc installs its own: once the parent has answered procReady
// with procRun, while the init still holds CAP_SYS_ADMIN, before it drops
// capabilities and changes user. libcontainer has no hook there; its debug
// log entry for that sync is the one place the init can act, so Arm
// raises the init's log level to debug and hooks logrus. An init that
// reaches the end of its set-up with the program not installed exits
// rather than run the command unfiltered.
package filter
