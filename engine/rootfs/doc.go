// Package rootfs keeps the writable layers of containers: Pool hands a
// create its layer (a spare emptied or made ahead of time when there is
// one), takes back the layers of removed containers to empty them for the
// next container of their image or delete them, in the background, and
// sweeps at start-up the layers no container owns. It works on the image
// store's Rootfs contract alone.
package rootfs
