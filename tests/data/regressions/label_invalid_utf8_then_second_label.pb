
F
,/job:localhost/replica:0/task:0/device:CPU:0
aBbad ÿ labelBgood