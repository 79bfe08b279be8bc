// Package logging makes the log/slog logger of hutch's processes: text on
// stderr at the daemon's --log-level. It is shared by the engine and the
// small host process (hutch-ns), so it imports nothing else of hutch.
package logging

import (
	"log/slog"
	"os"
	"strings"
)

// New returns a logger at level ("debug", "info", "warn"/"warning",
// "error"/"fatal"; anything else is info) and makes it slog's default.
func New(level string) *slog.Logger {
	lv := slog.LevelInfo
	switch strings.ToLower(level) {
	case "debug":
		lv = slog.LevelDebug
	case "warn", "warning":
		lv = slog.LevelWarn
	case "error", "fatal":
		lv = slog.LevelError
	}
	l := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))
	slog.SetDefault(l)
	return l
}
