// Command pause is the local node's sandbox process: the first process of every pod, holding
// its namespaces while the pod's containers come and go. It does what Kubernetes' own pause
// does (built here so that no image is ever pulled): wait for SIGINT or SIGTERM, and reap any
// child that a shared PID namespace hands it.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
