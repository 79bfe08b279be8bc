package preflight

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// checkDataDir warns when hutch's data dir (images, container records and
// logs) can be read by other users: it holds the user's work.
func checkDataDir(_ context.Context, env *Env) []Item {
	it := Item{Check: CheckDataDir, Name: "data dir"}
	st, err := os.Stat(env.DataDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		it.Detail = env.DataDir + " (created with mode 0700 at first start)"
	case err != nil:
		it.Status, it.Detail = Warning, err.Error()
	case !st.IsDir():
		it.Status, it.Detail = Missing, env.DataDir+" is not a directory"
		it.Fix = "move it away: hutch keeps its images and containers there"
	case st.Mode().Perm()&0o077 != 0:
		it.Status = Warning
		it.Detail = fmt.Sprintf("%s has mode %04o: other users can read your images, container files and logs", env.DataDir, st.Mode().Perm())
		it.Fix = "chmod 700 " + env.DataDir
	default:
		it.Detail = fmt.Sprintf("%s (mode %04o)", env.DataDir, st.Mode().Perm())
	}
	return []Item{it}
}
