package wire

import (
	"github.com/hutch-engine/hutch/internal/tinyjson"
)

// MarshalJSON encodes c as its struct tags say.
func (c *Config) MarshalJSON() ([]byte, error) {
	rot := tinyjson.NewObject(nil)
	if c.LogRotation.MaxSize != 0 {
		rot.Int("maxSize", c.LogRotation.MaxSize)
	}
	if c.LogRotation.MaxFiles != 0 {
		rot.Int("maxFiles", int64(c.LogRotation.MaxFiles))
	}
	if c.LogRotation.Compress {
		rot.Bool("compress", true)
	}
	o := tinyjson.NewObject(nil).Str("id", c.ID).Str("stateDir", c.StateDir).Str("socketPath", c.SocketPath).
		Str("logPath", c.LogPath).Raw("logRotation", rot.End())
	if len(c.LogAttrs) > 0 {
		o.StringMap("logAttrs", c.LogAttrs)
	}
	o.Str("exitFile", c.ExitFile)
	for _, f := range []struct {
		k string
		v bool
	}{{"tty", c.Tty}, {"openStdin", c.OpenStdin}, {"stdinOnce", c.StdinOnce}} {
		if f.v {
			o.Bool(f.k, true)
		}
	}
	if c.Height != 0 {
		o.Int("height", int64(c.Height))
	}
	if c.Width != 0 {
		o.Int("width", int64(c.Width))
	}
	if c.Debug {
		o.Bool("debug", true)
	}
	o.Str("runtimeBinary", c.RuntimeBinary)
	if c.RuntimeServer != "" {
		o.Str("runtimeServer", c.RuntimeServer)
	}
	return o.End(), nil
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (c *Config) UnmarshalJSON(b []byte) error {
	rot := fields{"maxSize": tinyjson.IntInto(&c.LogRotation.MaxSize), "maxFiles": tinyjson.IntInto(&c.LogRotation.MaxFiles),
		"compress": tinyjson.BoolInto(&c.LogRotation.Compress)}
	return tinyjson.Decode(b, fields{
		"id": tinyjson.StringInto(&c.ID), "stateDir": tinyjson.StringInto(&c.StateDir),
		"socketPath": tinyjson.StringInto(&c.SocketPath), "logPath": tinyjson.StringInto(&c.LogPath),
		"logRotation": func(v []byte) error { return tinyjson.Decode(v, rot) },
		"logAttrs":    tinyjson.StringMapInto(&c.LogAttrs),
		"exitFile":    tinyjson.StringInto(&c.ExitFile), "tty": tinyjson.BoolInto(&c.Tty),
		"openStdin": tinyjson.BoolInto(&c.OpenStdin), "stdinOnce": tinyjson.BoolInto(&c.StdinOnce),
		"height": tinyjson.Uint16Into(&c.Height), "width": tinyjson.Uint16Into(&c.Width),
		"debug": tinyjson.BoolInto(&c.Debug), "runtimeBinary": tinyjson.StringInto(&c.RuntimeBinary),
		"runtimeServer": tinyjson.StringInto(&c.RuntimeServer),
	})
}

// MarshalJSON encodes r as its struct tags say.
func (r *RuntimeRequest) MarshalJSON() ([]byte, error) {
	o := tinyjson.NewObject(nil).Str("op", r.Op).Str("bundle", r.Bundle)
	if len(r.Files) > 0 {
		o.Strings("files", r.Files)
	}
	if len(r.Process) > 0 {
		o.Raw("process", r.Process)
	}
	return o.End(), nil
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (r *RuntimeRequest) UnmarshalJSON(b []byte) error {
	return tinyjson.Decode(b, fields{
		"op": tinyjson.StringInto(&r.Op), "bundle": tinyjson.StringInto(&r.Bundle),
		"files": tinyjson.StringsInto(&r.Files), "process": tinyjson.RawInto((*[]byte)(&r.Process)),
	})
}

// MarshalJSON encodes r: Response's members and its own.
func (r *RuntimeReply) MarshalJSON() ([]byte, error) {
	o := r.Response.encode(tinyjson.NewObject(nil))
	if r.Fifo != "" {
		o.Str("fifo", r.Fifo)
	}
	if r.NeedsDelete {
		o.Bool("needsDelete", true)
	}
	if r.StateDir != "" {
		o.Str("stateDir", r.StateDir)
	}
	if r.OOMKilled {
		o.Bool("oomKilled", true)
	}
	return o.End(), nil
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (r *RuntimeReply) UnmarshalJSON(b []byte) error {
	f := r.Response.fields()
	f["fifo"] = tinyjson.StringInto(&r.Fifo)
	f["needsDelete"] = tinyjson.BoolInto(&r.NeedsDelete)
	f["stateDir"] = tinyjson.StringInto(&r.StateDir)
	f["oomKilled"] = tinyjson.BoolInto(&r.OOMKilled)
	return tinyjson.Decode(b, f)
}
