package wire

// Wrap returns the error "msg: cause…" that unwraps to every cause: what
// fmt.Errorf("%s: %w", …) makes, for code the shim links, which has no fmt
// (docs/design.md, Performance goals).
func Wrap(msg string, causes ...error) error {
	e := &wrapped{msg: msg, causes: causes}
	for _, c := range causes {
		if c != nil {
			e.msg += ": " + c.Error()
		}
	}
	return e
}

type wrapped struct {
	msg    string
	causes []error
}

func (e *wrapped) Error() string   { return e.msg }
func (e *wrapped) Unwrap() []error { return e.causes }
