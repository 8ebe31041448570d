// Command decode is a git-native coding agent for the command line.
package main

import (
	"os"

	"decode/commands"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() { os.Exit(commands.Main(os.Args, commands.NewFactory(version))) }
