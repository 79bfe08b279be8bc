package archive

import (
	"io"
)

// writeTree archives everything under the root, each Entry named by its
// path below the root.
func (r *Root) WriteTree(w io.Writer) error {
	t := newTarWriter(w)
	if err := t.walk(r.Fd(), ".", ""); err != nil {
		return err
	}
	return t.tw.Close()
}
