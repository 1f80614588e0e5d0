"""A run's bookkeeping: its model-call budget (`budget`), its report (`reports`) and the
progress of long work (`progress`)."""
