package apiserver

import (
	"fmt"
	"strings"

	"github.com/docker/go-units"
	"github.com/moby/moby/api/types/jsonstream"
)

// barWidth is the number of cells of Docker's progress bar: one per 2%.
const barWidth = 50

// ProgressText renders p the way Docker's daemon filled the "progress" field
// of stream messages (for example "[=====>     ]  1.2MB/3.4MB"): the daemon
// has no terminal, so the bar is always drawn and no time estimate is added.
// It returns "" when there is nothing to draw.
func ProgressText(p *jsonstream.Progress) string {
	if p == nil || (p.Current <= 0 && p.Total <= 0) {
		return ""
	}
	if p.Total <= 0 {
		if p.Units == "" {
			return fmt.Sprintf("%8v", units.HumanSize(float64(p.Current)))
		}
		return fmt.Sprintf("%d %s", p.Current, p.Units)
	}
	filled := min(int(float64(p.Current)/float64(p.Total)*100)/2, barWidth)
	bar := "[" + strings.Repeat("=", filled) + ">" + strings.Repeat(" ", barWidth-filled) + "] "

	var numbers string
	switch {
	case p.HideCounts:
	case p.Units == "" && p.Current > p.Total:
		numbers = fmt.Sprintf("%8v", units.HumanSize(float64(p.Current)))
	case p.Units == "":
		numbers = fmt.Sprintf("%8v/%v", units.HumanSize(float64(p.Current)), units.HumanSize(float64(p.Total)))
	case p.Current > p.Total:
		numbers = fmt.Sprintf("%d %s", p.Current, p.Units)
	default:
		numbers = fmt.Sprintf("%d/%d %s", p.Current, p.Total, p.Units)
	}
	return bar + numbers
}

// StreamMessage is a pull stream message as Docker's daemon sent it up to
// 28.x: jsonstream.Message plus the pre-rendered "progress" bar, which the
// API type no longer carries but docker-py users and older CLIs print.
type StreamMessage struct {
	jsonstream.Message
	ProgressText string `json:"progress,omitempty"`
}

// NewStreamMessage wraps m with its rendered progress bar.
func NewStreamMessage(m jsonstream.Message) StreamMessage {
	return StreamMessage{Message: m, ProgressText: ProgressText(m.Progress)}
}
