R
w1hccuda :x86_64