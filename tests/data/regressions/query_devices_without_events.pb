

/device:CPU:0

/device:GPU:0/stream:all