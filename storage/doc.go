// Package storage owns hutch's layer store and every way images come in and
// out of it: pull, import, load, save, commit and push.
//
// It wraps go.podman.io/storage (layers, images, container layers on disk)
// with options built explicitly for a per-user daemon: inside rootlesskit the
// daemon is uid 0, so the library's defaults would point at /var/lib. The
// graph driver is chosen by really trying native overlay, then overlay with
// fuse-overlayfs as mount program, then vfs, and the choice is remembered in
// the graph root so images never "disappear" because a later probe picked a
// different driver.
//
// Pulls resolve the manifest with go.podman.io/image/v5's docker transport,
// fetch and apply the layers themselves the way Docker does (concurrent
// downloads to temporary files, in-order extraction with one decompression),
// then run copy.Image into the containers-storage transport, which finds
// every layer in place and writes the image record, names and manifests.
// Images the fetcher does not handle are copied by copy.Image alone. Either
// way the progress (containers/image events, the fetcher's reads, the layer
// commits seen by a thin wrapper around the store) becomes Docker's pull
// stream.
//
// Images that do not come from a registry take the same road: docker
// import writes the rootfs as a one-layer OCI layout (the store extracts
// the layer once, from the uncompressed tar), docker load reads Docker's
// archive with the docker-archive transport, and docker save writes one
// through a pipe, all with copy.Image. Copies that fail remove the layers
// they created, as failed pulls do. Where pulls stream into the overlay
// driver's staging directories, the layers these copies hand to
// PutLayer are extracted in the engine's process the same way
// (putstaged_linux.go) rather than by the library's re-execution of the
// engine's binary for each layer.
//
// docker commit takes the same road from a source of its own: the container
// layer's diff becomes a layer on the image's top layer, and copy.Image
// writes the image from the new config and manifest (commit.go,
// commitsource.go). docker push is copy.Image from the storage transport
// to docker://, its events turned into Docker's push stream (push.go).
//
// Docker keeps digest references ("busybox@sha256:…") apart from tags;
// containers/storage has names only. The digests pulls resolved to, the
// last tag time and a commit's parent live in one image big-data item
// (imagemeta.go), so that tagging or importing adds no digest reference
// and untagging removes exactly what Docker's reference store would.
//
// Programs linking this package must call reexec.Init() from
// go.podman.io/storage/pkg/reexec first thing in main: layer extraction
// re-executes the binary as "storage-untar" / "storage-applyLayer".
package storage
