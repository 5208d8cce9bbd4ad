import torch

w = torch.tensor([0.8, -0.3], requires_grad=True)
x = torch.tensor([1.0, 2.0])
y = torch.tensor(0.0)  # the right answer: class 0

p = torch.sigmoid(w @ x)  # 0.55: a little more sure of class 1
pred = torch.round(p)  # the decision, 1, to count the mistake
loss = (pred - y) ** 2
loss.backward()
print(pred.item(), loss.item())
print(w.grad)  # round's slope is 0: nothing reaches w
