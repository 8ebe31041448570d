//go:build !unix

package tools

import "io/fs"

// linkCount returns 1: this platform does not report hard links cheaply.
func linkCount(fs.FileInfo) uint64 { return 1 }

// keepOwner does nothing on platforms without Unix owners.
func keepOwner(string, fs.FileInfo) {}
