"""The messages between the processes and how they travel: framing, the server-judge and
judge-candidate conversations, tensor packing and GPU memory handed over by descriptor."""
