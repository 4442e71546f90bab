// Command hello is taskrun's example container: it prints $GREETING, waits for SIGTERM and says
// goodbye.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	fmt.Println(os.Getenv("GREETING"))
	<-stop
	fmt.Println("SIGTERM: draining, then exiting")
}
