// Command hello is a minimal main package the construct tests build as a Lambda bootstrap.
package main

import "fmt"

func main() { fmt.Println("hello") }
