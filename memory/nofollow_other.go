//go:build !unix

package memory

// noFollow is 0 where open has no such flag; Remember's Lstat check stands.
const noFollow = 0
