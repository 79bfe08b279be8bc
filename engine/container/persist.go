package container

import (
	"os"
	"strings"

	"github.com/hutch-engine/hutch/internal/atomicfile"
)

// recordFile is the record's name inside its directory <root>/<id>/.
const recordFile = "container.json"

// tmpPrefix starts the names of files being written; a crash leaves them
// behind and the next load removes them.
const tmpPrefix = atomicfile.TempPrefix

// trashPrefix starts the name a record directory gets while it is being
// deleted, so that the deletion is one rename and a crash half-way through
// a RemoveAll cannot leave a half-record that loads.
const trashPrefix = ".trash-"

// Durability: a record is written so that readers, and the next start
// after a crash, see the old or the new content, never a torn one (temp
// file in the same directory, rename). Creation also fsyncs the file and
// the directory, so that a container survives a power loss. State updates
// (running, exited, removing) do not: a kill -9 cannot lose what is in the
// page cache, and after a power loss no container runs any more and
// reconcile makes every record true again. This saves about 7 fsyncs per
// container run (make bench measured 7-11 ms of the seed flow). Updates
// exchange the record with a spare file (atomicfile.Swap) instead of
// renaming a new file over it, so they free no block. Deletion is not
// synced either (deleteLocked).
const durable = true

// syncDir makes the entries of dir (creations, renames, removals) durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// isScratch reports whether a directory entry is one of the store's own
// leftovers rather than a record.
func isScratch(name string) bool {
	return strings.HasPrefix(name, tmpPrefix) || strings.HasPrefix(name, trashPrefix)
}
