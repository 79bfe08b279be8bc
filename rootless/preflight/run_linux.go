package preflight

import "os"

// checkFuncs lists the checks in the order of Checks.
func checkFuncs() []checkFunc {
	return []checkFunc{checkIDMap, checkSubIDs, checkUserNS, checkTun, checkSlirp, checkStorage, checkCgroup, checkRuntimeDir, checkDataDir}
}

// openRW opens a device for reading and writing, as its user will.
func openRW(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return f.Close()
}
