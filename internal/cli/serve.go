package cli

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// Serve serves srvs[i] on lis[i], over TLS when cert is set, until ctx ends or one of them fails;
// then it shuts them all down and returns that failure, if any.
func Serve(ctx context.Context, srvs []*http.Server, lis []net.Listener, cert, key string) error {
	errc := make(chan error, len(srvs))
	for i, s := range srvs {
		go func() {
			var err error
			if cert != "" {
				err = s.ServeTLS(lis[i], cert, key)
			} else {
				err = s.Serve(lis[i])
			}
			if !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	for _, s := range srvs {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s.Shutdown(sctx)
		cancel()
	}
	return err
}
