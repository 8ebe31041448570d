package commands

import (
	"fmt"

	"decode/session"
)

// snapshotText is what the transcript shows of a snapshot entry.
func snapshotText(e session.Entry) string {
	var d session.SnapshotData
	_ = e.Decode(&d)
	tree := d.Tree
	if len(tree) > 12 {
		tree = tree[:12]
	}
	line := fmt.Sprintf("# code %s: snapshot %s", orDash(d.Kind), tree)
	if d.Kind == session.SnapRewind {
		line = fmt.Sprintf("# code rewound to entry %d: snapshot %s", d.To, tree)
	}
	if n := len(d.Skipped); n > 0 {
		line += fmt.Sprintf(" (skipped %s: %s", plural(n, "path"), d.Skipped[0].Path)
		if n > 1 {
			line += ", …"
		}
		line += ")"
	}
	return line
}
