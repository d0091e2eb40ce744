//! corral's many-core discrete-event simulator. It runs `corral-policy`'s
//! decisions unchanged; the simulator itself lands with the simulator issue.
