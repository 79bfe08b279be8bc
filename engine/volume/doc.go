// Package volume keeps Docker volumes: directories in the engine's data
// root that containers mount and that outlive them.
//
// Only Docker's "local" driver without options exists: a volume is
// <root>/<name>/_data, with its creation time and labels beside it in
// volume.json, as `docker volume inspect` shows them. A volume is made in a
// scratch directory and renamed into place, and removed by renaming it
// away first, so a crash never leaves half a volume under its name; Open
// clears what such a crash left.
//
// The store knows nothing of containers: which volumes are in use is the
// engine's to say (package engine, volumes.go), from the containers'
// records. CopyUp fills an empty volume from the image, as Docker does
// when one is first mounted over image content.
package volume
