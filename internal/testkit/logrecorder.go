package testkit

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
)

// LogRecorder is a slog.Handler that keeps debug records and signals each.
type LogRecorder struct {
	Signal chan struct{} // gets a value, if there is room, per record

	mu      sync.Mutex
	records []map[string]string // guarded by mu
}

// NewLogRecorder returns an empty recorder.
func NewLogRecorder() *LogRecorder { return &LogRecorder{Signal: make(chan struct{}, 1)} }

func (h *LogRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *LogRecorder) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *LogRecorder) WithGroup(string) slog.Handler            { return h }

func (h *LogRecorder) Handle(_ context.Context, r slog.Record) error {
	rec := map[string]string{"msg": r.Message, "level": r.Level.String()}
	r.Attrs(func(a slog.Attr) bool {
		rec[a.Key] = a.Value.String()
		return true
	})
	h.mu.Lock()
	h.records = append(h.records, rec)
	h.mu.Unlock()
	select {
	case h.Signal <- struct{}{}:
	default:
	}
	return nil
}

// All returns the records so far, each as its message, level and attributes.
func (h *LogRecorder) All() []map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]map[string]string(nil), h.records...)
}

// TestLogger logs warnings and errors through t.Log.
func TestLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}
