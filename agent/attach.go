package agent

import "decode/session"

// Attached is files attached to a prompt, taken by the first run of a
// command that appends a prompt. Options are copied from run to run, and
// they all share one *Attached, so taking them once is enough.
type Attached struct {
	files []session.Attachment
	taken bool
}

// NewAttached holds files for the next prompt; nil when there are none.
func NewAttached(files []session.Attachment) *Attached {
	if len(files) == 0 {
		return nil
	}
	return &Attached{files: files}
}

// take returns the files, once.
func (a *Attached) take() []session.Attachment {
	if a == nil || a.taken {
		return nil
	}
	a.taken = true
	return a.files
}
