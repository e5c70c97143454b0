// Command etcd is the etcd server at the version pinned in go.mod, built from the same module
// graph as kube-apiserver so that the two always agree on the etcd API.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
