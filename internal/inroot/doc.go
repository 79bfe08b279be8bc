// Package inroot resolves and opens paths inside a directory tree that
// someone else controls: a container's rootfs, a volume, an image layer,
// a build context. Every name is looked up from a file descriptor held
// for the tree's root with *at system calls, never as a string joined to
// the root's path, so no symlink, ".." or concurrent rename of the tree
// leads a lookup out of it.
//
// Two scopes are offered. InRoot resolves as if the root were "/": an
// absolute symlink starts again at the root and ".." stops there, as a
// process chrooted into the tree sees it (docker cp, image extraction,
// the container's /etc/passwd). Beneath refuses what would leave the
// tree, absolute names and symlinks included, with ErrEscape (a volume's subpath,
// as Docker's safepath does, and the build context). NoSymlinks refuses
// every symlink on the way.
//
// Lookups use openat2 (Linux 5.6) with RESOLVE_IN_ROOT or
// RESOLVE_BENEATH and RESOLVE_NO_MAGICLINKS, retried on the EAGAIN the
// kernel returns when a rename races with a "..". Where openat2 is
// missing or refused (a seccomp filter), or keeps failing with EAGAIN
// under a racing rename, a user-space walk takes its place: one
// component at a time, each opened O_PATH|O_NOFOLLOW from its parent's
// descriptor, symlinks read through their own descriptor and resolved
// in the root, ".." taken from the walk's own stack of descriptors and
// never from the file system; a walk that went through ".." or a
// symlink checks at its end that the directory it reached is still
// under the root (a rename may have moved it out meanwhile), else it
// fails with EAGAIN. A magic link (/proc/self/root) is then only a
// symlink whose text resolves in the root.
//
// What a lookup returns is a descriptor: what is done to the file then
// goes through it, or through *at calls on its parent that never follow
// the last name (Lstat, Readlink, RemoveAll, Walk).
package inroot
