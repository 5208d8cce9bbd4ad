import torch

# 3 samples (the rows), 2 features each
X = torch.arange(1.0, 7.0).reshape(3, 2)
# one bias per feature
b = torch.zeros(2, requires_grad=True)

out = X + b  # the same b added to all 3 rows
loss = (out ** 2).sum()
loss.backward()
print(b.grad)  # [18, 24]: the 3 rows summed
