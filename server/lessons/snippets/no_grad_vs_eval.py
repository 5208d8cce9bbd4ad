import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 1))
x = torch.randn(3, 4)

model.eval()                     # eval() changes how layers behave: dropout is off ...
a1, a2 = model(x), model(x)
print("eval() alone:   recorded:", a1.grad_fn is not None, "| same output twice:", torch.equal(a1, a2))

model.train()
with torch.no_grad():            # no_grad() changes what is recorded: nothing ...
    b1, b2 = model(x), model(x)
print("no_grad() alone: recorded:", b1.grad_fn is not None, "| same output twice:", torch.equal(b1, b2))

model.eval()
with torch.no_grad():            # ... so evaluation wants both
    c1, c2 = model(x), model(x)
print("both:           recorded:", c1.grad_fn is not None, "| same output twice:", torch.equal(c1, c2))
