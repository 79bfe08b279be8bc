//go:build !linux

package jsonlog

func watchFile(string, func()) (func(), bool) { return nil, false }
