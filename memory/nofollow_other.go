//go:build !unix

package memory

import "os"

// noFollow is 0 where open has no such flag; Remember's Lstat check stands.
const noFollow = 0

// multiplyLinked cannot tell here.
func multiplyLinked(*os.File) bool { return false }
