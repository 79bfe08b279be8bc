// Package buildkit is hutch's BuildKit daemon: BuildKit's solver, its
// Dockerfile and gateway frontends and one worker, embedded as a library
// and served to the docker CLI, buildx and compose through the engine's
// POST /grpc and POST /session, as Docker's daemon serves them.
//
// It runs as its own process (the hutch-buildkit binary), which the engine
// starts at the first build and proxies those two endpoints to: linking
// BuildKit into the engine would put its packages' start-up and mapped
// pages into every idle engine, and a build needs none of the engine's
// memory. The process is the engine's child, so it shares the engine's
// user and mount namespaces and is uid 0 there, as the engine is.
//
// The worker is hutch's own:
//   - RUN steps run through hutch-runtime (libcontainer), by a runtime
//     server of the process's own (executor_linux.go), in the engine's
//     user namespace, with the build network modes default (the engine's
//     network, as Docker's containerd-backed builder uses), host and none.
//   - snapshots live on native overlay where the kernel allows it inside
//     the user namespace, and are plain copies otherwise; all of BuildKit's
//     state is under the engine's data root (DataRoot/buildkit).
//   - images named in FROM come from the engine's image store first, as
//     with Docker's builder (localimages.go): the engine's API serves them
//     (GET /images/{name}/json, GET /images/get), and their blobs land in
//     BuildKit's content store once; images not there are pulled by
//     BuildKit with the client's credentials through the session.
//   - the result lands in the engine's image store through the "moby"
//     exporter (exporter.go), which buildx's docker driver asks for: the
//     image is committed by BuildKit's image writer (and pushed when asked)
//     and loaded into the engine (POST /images/load) unless an image of
//     that id is already there, then tagged.
package buildkit
