// Package spec builds the OCI runtime spec (config.json) of a container from
// its image config, Docker's create request (Config and HostConfig) and what
// the engine knows about the host, following dockerd's rules
// (daemon/oci_linux.go, daemon/create.go) so that containers behave as they
// do under Docker.
//
// It owns the Docker-to-OCI translation only: the command line (entrypoint
// and cmd merged with the image's), environment, working directory, user and
// groups resolved through the image's /etc/passwd and /etc/group (opened
// inside the rootfs, never following a symlink out of it), capabilities,
// the seccomp profile, namespaces, Docker's default mounts and masked
// paths, binds and tmpfs mounts, rlimits and cgroup resources.
//
// It does not fit the spec to the host: the shim's AdjustSpec (package
// engine/shim) strips cgroup limits where they cannot be enforced (and words
// the warnings), bind-mounts /sys and /proc where the kernel refuses to mount
// them, and drops uid=/gid= mount options the user namespace cannot map. The
// engine calls both: Build, then shim.AdjustSpec, and shows the warnings of
// both in the create response.
//
// Limits, stated so they are not mistaken for Docker's behaviour:
//   - seccomp is Docker's (Docker's default profile from
//     moby/profiles/seccomp, fitted to the container's capabilities;
//     --security-opt seccomp=unconfined|builtin|<profile>; none for a
//     privileged container that names none; Input.SeccompProfile is the
//     daemon's default), but a profile that cannot be loaded is refused at
//     create (CheckSeccomp), where Docker fails the start. hutch-runtime
//     compiles and installs the filter (package engine/shim/oci/filter).
//   - no AppArmor or SELinux labels (accepted and ignored, as Docker does on
//     hosts without them).
//   - privileged containers get every capability, no masked or read-only
//     paths and a writable /sys and cgroupfs, but not the host's device nodes.
//   - --gpus is refused with errdefs.ErrNotImplemented.
//   - volumes are the engine's to make (package engine/volume): Build binds
//     the directories Input.Volumes names, the mount points --volumes-from
//     copied at create (Input.Inherited), and volume subpaths where the
//     engine staged them (Input.Subpaths). Image mounts are bound,
//     read-only, from where the engine staged them too (Input.Images).
//   - --device binds the host's node (a user namespace cannot mknod) with a
//     device cgroup rule; --device-cgroup-rule adds rules. Both apply only
//     where the host enforces a device cgroup.
//   - a read-only bind is read-only on its top mount only ("ro"), unless the
//     mount asks for ReadOnlyForceRecursive ("rro"); Docker picks "rro" by
//     default on kernels that have mount_setattr.
//   - a missing bind source is an error here: the engine makes those of -v
//     and of --mount bind-create-src (directories) before Build, as Docker
//     does.
package spec
