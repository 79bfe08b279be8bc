package engine

import (
	"slices"
	"strings"
	"testing"
)

func TestParsePS(t *testing.T) {
	out := `USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND
root           1  0.0  0.0   4384  3280 ?        Ss   10:00   0:00 sh -c sleep 300 & wait
root          17  0.0  0.0   2280   768 ?        S    10:00   0:00 sleep 300
other        170  0.0  0.0   2280   768 ?        S    10:00   0:00 not ours
`
	top, err := parsePS(out, []string{"1", "17"})
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Titles) != 11 || top.Titles[1] != "PID" || top.Titles[10] != "COMMAND" {
		t.Errorf("titles %q", top.Titles)
	}
	if len(top.Processes) != 2 || !slices.Equal(top.Processes[0][9:], []string{"0:00", "sh -c sleep 300 & wait"}) || top.Processes[1][1] != "17" {
		t.Errorf("processes %q", top.Processes)
	}
	if _, err := parsePS("COMMAND\nsh\n", []string{"1"}); err == nil || !strings.Contains(err.Error(), "Couldn't find PID field in ps output") {
		t.Errorf("no PID column: %v", err)
	}
	if top, err := parsePS("", nil); err == nil {
		t.Errorf("empty output: %+v", top)
	}
}
