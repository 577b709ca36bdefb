"""Two threads take two locks in opposite order and forward waits for both: a deadlock.

task: l1_relu
expect: TIMEOUT
error: exceeded its limit
"""

import threading
import time

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        first, second = threading.Lock(), threading.Lock()

        def take(a, b):
            with a:
                time.sleep(0.1)
                with b:
                    pass

        workers = [threading.Thread(target=take, args=(first, second)), threading.Thread(target=take, args=(second, first))]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        return x
