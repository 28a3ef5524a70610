package utils

import (
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/gomega" //nolint:revive,staticcheck
)

// LocalImageDigests reads bin/local/images.txt, which make images writes
// ("NAME DIGEST" a line): every image it pushed to the local registry, by
// name.
func LocalImageDigests(projectDir string) map[string]string {
	data, err := os.ReadFile(filepath.Join(projectDir, "bin", "local", "images.txt"))
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "make images writes it")
	digests := map[string]string{}
	for _, line := range GetNonEmptyLines(string(data)) {
		if f := strings.Fields(line); len(f) == 2 {
			digests[f[0]] = f[1]
		}
	}
	return digests
}
