package clock

import (
	"testing"
	"time"
)

func TestModelDriftAndJumps(t *testing.T) {
	m, err := NewModel(0, 0, 100_000) // 10% fast
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Local(int64(10 * time.Second)); got != int64(11*time.Second) {
		t.Fatalf("10%% fast clock after 10s true: got %v want 11s", time.Duration(got))
	}
	// A 10 s local sleep on a 10% fast clock takes 10/1.1 s of true time.
	if got := m.TrueAfter(10 * time.Second); got < 9090909090 || got > 9090909092 {
		t.Fatalf("TrueAfter(10s) at +10%%: got %v", got)
	}
	m.Jump(int64(10*time.Second), -5*time.Second)
	if got := m.Local(int64(10 * time.Second)); got != int64(6*time.Second) {
		t.Fatalf("after -5s jump: got %v want 6s", time.Duration(got))
	}
	m.Resync(int64(20 * time.Second))
	if got := m.Local(int64(21 * time.Second)); got != int64(21*time.Second) {
		t.Fatalf("after resync: got %v", time.Duration(got))
	}
}

func TestTrueAfterNeverEarly(t *testing.T) {
	for _, ppm := range []int64{-500_000, -123_457, -1, 0, 1, 999, 333_333, 500_000} {
		m, _ := NewModel(0, 0, ppm)
		for _, d := range []time.Duration{1, 7, time.Millisecond, 3*time.Second + 1, time.Hour} {
			tr := m.TrueAfter(d)
			if m.Local(int64(tr)) < int64(d) {
				t.Fatalf("ppm %d: sleep %v ends early at true %v (local %v)", ppm, d, tr, m.Local(int64(tr)))
			}
			if tr > 0 && m.Local(int64(tr-1)) >= int64(d) {
				t.Fatalf("ppm %d: sleep %v ends late at true %v", ppm, d, tr)
			}
		}
	}
}

func TestCheckDrift(t *testing.T) {
	if _, err := NewModel(0, 0, 500_001); err == nil {
		t.Fatal("drift beyond +50% accepted")
	}
	if _, err := NewModel(0, 0, -500_000); err != nil {
		t.Fatalf("drift -50%% rejected: %v", err)
	}
}
