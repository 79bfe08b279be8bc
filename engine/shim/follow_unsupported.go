//go:build !linux

package shim

func watchFile(string, func()) (func(), bool) { return nil, false }
