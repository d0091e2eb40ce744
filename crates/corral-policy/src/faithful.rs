//! (filled by the policy engine issue)
