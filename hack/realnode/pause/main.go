// Command pause is the sandbox (pause) container of the local cluster's real
// node (hack/real-node.sh): it holds a pod's namespaces and does nothing
// else. It sleeps until SIGTERM or SIGINT, then exits 0, and, as PID 1 of a
// pod that shares its process namespace, reaps every child that exits.
//
// It is a static Go binary packed into an image of one file by
// its Dockerfile (hack/images, tar=), so no image is pulled from a registry: containerd's
// sandbox_image names that image, imported with ctr.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 8)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		reap()
	}
}

// reap waits for every child that has exited, without blocking.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}
