// Package sdkfix holds workarounds for aws-sdk-go-v2 behaviour that jobkit's clients of a local
// emulator need.
package sdkfix

import (
	"context"
	"io"

	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// NoBodyWriteTo is an aws-sdk-go-v2 API option (config.WithAPIOptions, or a client's APIOptions)
// for clients of a local emulator: it hides the WriteTo method of each request's body stream, so
// that net/http reads the body with Read only.
//
// It works around a race in smithy-go's request bodies that makes aws-sdk-go-v2 send a
// call twice when a server answers fast, as a local emulator under load does.
//
// The SDK hands net/http a request body that, once closed, answers WriteTo with io.EOF. net/http
// writes a body in two reads: the declared Content-Length, then one more read to check nothing
// follows. The first read reaches the socket before the second one starts, so a fast server can
// answer in between; the SDK then gets the response and closes the body, and the second read's
// WriteTo returns io.EOF. net/http takes that for a failed write and closes the connection while
// the SDK reads the response, and the SDK retries a call the server has already carried out: a
// message sent twice, a conditional write refused by its own first attempt, a stack created
// twice. A Read after the close returns io.EOF too, which net/http takes for the end of the body,
// so a body without WriteTo is safe.
func NoBodyWriteTo(stack *middleware.Stack) error {
	return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("jobkitNoBodyWriteTo", hideWriteTo), middleware.After)
}

func hideWriteTo(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
	if req, ok := in.Request.(*smithyhttp.Request); ok {
		if s, ok := req.GetStream().(io.ReadSeeker); ok {
			if _, ok := s.(io.WriterTo); ok {
				wrapped, err := req.SetStream(readSeeker{s})
				if err != nil {
					return middleware.FinalizeOutput{}, middleware.Metadata{}, err
				}
				in.Request = wrapped
			}
		}
	}
	return next.HandleFinalize(ctx, in)
}

// readSeeker is an io.ReadSeeker and nothing else.
type readSeeker struct{ io.ReadSeeker }
