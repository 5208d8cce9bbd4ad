import torch
import torch.nn.functional as F

# one sample's scores for 3 classes
z = torch.tensor([[2.0, 1.0, 0.1]],
                 requires_grad=True)
y = torch.tensor([2])  # right class

loss = F.cross_entropy(z, y)
loss.backward()
print(z.grad)

# by hand: softmax minus one-hot
with torch.no_grad():
    p = F.softmax(z, dim=1)
    print(p - F.one_hot(y, 3))
