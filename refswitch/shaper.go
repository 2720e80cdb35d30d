package refswitch

import "time"

// shaper is a token bucket emulating a link of a given bandwidth: sending n bytes costs n tokens,
// tokens accrue at the link rate up to a burst, and a sender in debt sleeps until it is repaid.
type shaper struct {
	rate   float64 // bytes per second
	burst  float64
	tokens float64
	last   time.Time
	sleep  func(time.Duration)
	now    func() time.Time
}

// shaperBurst lets two full-size frames through back to back, as a link's serialiser would.
const shaperBurst = 2 * 1514

func newShaper(mbps float64) *shaper {
	return &shaper{rate: mbps * 1e6 / 8, burst: shaperBurst, tokens: shaperBurst, last: time.Now(), sleep: time.Sleep, now: time.Now}
}

// wait blocks until n bytes may leave.
func (s *shaper) wait(n int) {
	now := s.now()
	s.tokens += now.Sub(s.last).Seconds() * s.rate
	s.tokens = min(s.tokens, s.burst)
	s.last = now
	s.tokens -= float64(n)
	if s.tokens < 0 {
		s.sleep(time.Duration(-s.tokens / s.rate * float64(time.Second)))
	}
}
