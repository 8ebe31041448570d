package commands

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// versionLine is what decode --version prints after "decode version ": the
// version, the commit and build date (from -ldflags, else from the VCS
// stamp Go records in the binary) and the Go version. It runs on every
// start, so it does nothing heavier than reading the build info.
func versionLine(f *Factory) string {
	commit, date := f.Commit, f.Date
	if commit == "" {
		commit, date = vcsStamp(date)
	}
	var parts []string
	if commit != "" {
		parts = append(parts, "commit "+commit)
	}
	if date != "" {
		parts = append(parts, "built "+date)
	}
	parts = append(parts, runtime.Version())
	return f.Version + " (" + strings.Join(parts, ", ") + ")"
}

// vcsStamp reads the commit (short, "-dirty" when modified) and commit time
// that go build records unless -buildvcs=false; date is kept when set.
func vcsStamp(date string) (string, string) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "", date
	}
	var commit string
	var dirty bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
			if len(commit) > 12 {
				commit = commit[:12]
			}
		case "vcs.time":
			if date == "" {
				date = s.Value
			}
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if commit != "" && dirty {
		commit += "-dirty"
	}
	return commit, date
}
