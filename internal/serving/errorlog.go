package serving

// errorLogBurst is how many lines of net/http's errors are logged at once.
const errorLogBurst = 5
