"""Counting how much test work runs at once."""

import threading


class Peak:
    """Counts how many calls run at once."""

    def __init__(self) -> None:
        self.running = 0
        self.peak = 0
        self.lock = threading.Lock()

    def enter(self) -> None:
        with self.lock:
            self.running += 1
            self.peak = max(self.peak, self.running)

    def leave(self) -> None:
        with self.lock:
            self.running -= 1
