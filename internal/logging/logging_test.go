package logging

import (
	"context"
	"log/slog"
	"testing"
)

func TestNewLevels(t *testing.T) {
	for _, tc := range []struct {
		level string
		want  slog.Level
	}{
		{"debug", slog.LevelDebug}, {"DEBUG", slog.LevelDebug}, {"info", slog.LevelInfo}, {"", slog.LevelInfo},
		{"warn", slog.LevelWarn}, {"warning", slog.LevelWarn}, {"error", slog.LevelError}, {"fatal", slog.LevelError}, {"nonsense", slog.LevelInfo},
	} {
		l := New(tc.level)
		if !l.Enabled(context.Background(), tc.want) || tc.want > slog.LevelDebug && l.Enabled(context.Background(), tc.want-4) {
			t.Errorf("New(%q): not exactly level %v", tc.level, tc.want)
		}
	}
}
