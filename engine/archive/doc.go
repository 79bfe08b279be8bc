// Package archive is the tar side of docker cp and docker export: the
// stat of a path in a container's file system, the tar of a file or a
// tree, and the extraction of a tar into a directory, each through
// descriptors of a root (package inroot) so that no symlink, ".." or
// concurrent swap in the container leads outside it. Entries that would
// land outside the destination fail as Docker's do
// (errdefs.ErrInvalidArgument). The engine chooses the root (a rootfs, a
// volume, a bind's source) and the path; this package does the rest.
package archive
