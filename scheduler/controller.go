package scheduler

import (
	"context"
	"errors"
	"net/url"
	"time"

	cp "github.com/inapack/inapack/controlplane"
	"github.com/inapack/inapack/controlplane/api"
)

// The controller may be restarting (a crash, an upgrade) when a job starts or ends: a call that
// did not reach it is retried until its context ends, so that a short outage neither fails the
// jobs starting meanwhile nor leaves the entries of the jobs ending behind.

// unreachable reports whether err is a failure to reach the controller at all (no answer), as
// opposed to its answer.
func unreachable(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue)
}

// retryUnreachable calls op until it is answered, backing off from 100 ms to 2 s; it returns the
// last error and whether an earlier call went unanswered (the controller may then have done what
// that call asked before it failed).
func retryUnreachable(ctx context.Context, op func(context.Context) error) (err error, retried bool) {
	wait := 100 * time.Millisecond
	for {
		err = op(ctx)
		if err == nil || !unreachable(err) {
			return err, retried
		}
		select {
		case <-ctx.Done():
			return err, retried
		case <-time.After(wait):
		}
		retried = true
		wait = min(2*wait, 2*time.Second)
	}
}

// addJob installs a job's entries through the controller. A conflict after an unanswered call is
// that call's own effect (switch job ids are the scheduler's to give), so the job is installed.
func (s *Service) addJob(ctx context.Context, jc cp.JobConfig) error {
	err, retried := retryUnreachable(ctx, func(ctx context.Context) error { return s.cfg.Controller.AddJob(ctx, jc) })
	if err != nil && retried && api.IsConflict(err) {
		return nil
	}
	return err
}

// removeJob removes a job's entries through the controller; a job it does not have (its answer is
// 404) is gone already. The answer's status decides, never the error's text: an unanswered call
// whose URL or message quotes 404 is not a removal.
func (s *Service) removeJob(ctx context.Context, id int) error {
	err, _ := retryUnreachable(ctx, func(ctx context.Context) error { return s.cfg.Controller.RemoveJob(ctx, id) })
	if err != nil && api.IsNotFound(err) {
		return nil
	}
	return err
}
