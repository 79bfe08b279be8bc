package container

import (
	"context"
	"testing"
)

// BenchmarkLifecycle is the record side of docker run --rm: create, start,
// exit, mark for removal, delete.
func BenchmarkLifecycle(b *testing.B) {
	ctx := context.Background()
	s, err := NewStore(b.TempDir(), WithLogger(quiet()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	for b.Loop() {
		c := sampleContainer()
		c.ID, c.Name = "", ""
		if err := s.Create(ctx, c); err != nil {
			b.Fatal(err)
		}
		steps := []func(*Container) error{
			setRunning,
			func(c *Container) error { return c.State.SetExited(ExitInfo{}) },
			func(c *Container) error { return c.State.SetRemoving(c.Name, false) },
		}
		for _, fn := range steps {
			if err := s.Update(ctx, c.ID, fn); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Delete(ctx, c.ID); err != nil {
			b.Fatal(err)
		}
	}
}
