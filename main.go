// Command decode is a git-native coding agent for the command line.
package main

import (
	"os"

	"decode/commands"
)

// version, commit and date are set at build time:
//
//	go build -ldflags "-X main.version=v0.1.0 -X main.commit=$(git rev-parse --short HEAD) -X main.date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
//
// Without them decode --version falls back to the VCS stamp Go records.
var version, commit, date = "dev", "", ""

func main() {
	f := commands.NewFactory(version)
	f.Commit, f.Date = commit, date
	os.Exit(commands.Main(os.Args, f))
}
