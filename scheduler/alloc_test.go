package scheduler

import "testing"

// TestSlotBase: a new job's slots go where the live jobs on its switches overlap it least; jobs on
// other switches do not count; among equal ranges the lowest base wins. Switch job ids go round
// from the one given last, past the ones in use.
func TestSlotBase(t *testing.T) {
	live := []SlotRange{
		{Switches: []string{"s1"}, Base: 0, Window: 16},
		{Switches: []string{"s2", "s3"}, Base: 16, Window: 16},
		{Switches: []string{"s9"}, Base: 32, Window: 32},
	}
	for _, c := range []struct {
		name     string
		switches []string
		window   int
		want     int
	}{
		{"free range after s1's", []string{"s1"}, 16, 16},
		{"after both s1's and s3's", []string{"s1", "s3"}, 16, 32},
		{"s9 is elsewhere", []string{"s2"}, 16, 0},
		{"no live job", []string{"s4"}, 8, 0},
		{"full: least overlap", []string{"s1", "s2"}, 48, 16},
	} {
		if got := SlotBase(64, c.window, c.switches, live); got != c.want {
			t.Errorf("%s: SlotBase(64, %d, %v) = %d, want %d", c.name, c.window, c.switches, got, c.want)
		}
	}
	used := func(id int) bool { return id <= 3 || id == 5 }
	for _, c := range []struct{ last, want int }{{0, 4}, {3, 4}, {4, 6}, {MaxSwitchJob, 4}, {MaxSwitchJob - 1, MaxSwitchJob}} {
		if got := NextSwitchJob(c.last, used); got != c.want {
			t.Errorf("NextSwitchJob after %d with 1-3 and 5 used = %d, want %d", c.last, got, c.want)
		}
	}
	if got := NextSwitchJob(7, func(int) bool { return true }); got != 0 {
		t.Errorf("NextSwitchJob with every id used = %d, want 0", got)
	}
}
